"""The whole job in one command (``abcde evaluate``): impact, an exploration sample, a pair sample
to judge and the report, from one read of the inputs and one fragment table.

Each step reuses the diff the impact computation built (:attr:`ImpactResult.diff`): the
exploration sample and the pair sample are drawn from it, and the report is built from the
results, so the inputs are read and joined once (four commands read them four times). The
directory it writes::

    OUT/impact/            items.parquet, base_clusters.parquet, exp_clusters.parquet (the affected items and
                           clusters; every row with ``only_affected=False``), impact.json
    OUT/explore/sample.parquet
    OUT/quality/           the pair sample to judge (tasks.csv, ...), as 'abcde pairs' writes it
    OUT/report.html, OUT/report.md
    OUT/evaluate.json      how it was run: the inputs (as given, absolute, fingerprinted), the options,
                           the engine, the abcde version and where each output is (its format, writer and
                           reader: :mod:`abcde.workflow.record`)

The whole directory is built aside (``.OUT.abcde-new-<pid>-…`` beside it) and swapped in at the end
in one step, so ``OUT`` always holds one run's output, whole: an earlier run's until the new one is
complete (a failure, a refusal or a kill at any moment leaves it as it was), then the new one. An
earlier ``OUT/quality``'s judgements are hard-linked into the new directory just before the swap:
the same sample keeps them, another one (``force``) moves them with its sample to
``OUT/quality/replaced/``, as ``abcde pairs`` does. What a killed run left beside ``OUT`` is removed by
the next run.

Then: judge ``OUT/quality`` (``abcde judge serve OUT/quality``, a model, or an oracle column), and
``abcde report OUT`` (:func:`abcde.workflow.report.report_from_evaluation`) rebuilds the report from
that record with every section and the quality estimates.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from abcde.core.inputs import Inputs, describe
from abcde.engine import Engine
from abcde.errors import InputError
from abcde.metrics.impact import ImpactResult, impact
from abcde.metrics.pointwise import PointwiseResult
from abcde.quality.draw import read_pair_sample_early, stage_pair_sample
from abcde.samples.sample_dir import check_hidden
from abcde.report.build import Report, build_report
from abcde.report.truth import check_truth_sample, pointwise_against  # noqa: F401  (pointwise_against: also here)
from abcde.sampling.explore import ExplorationSample, check_group_columns, sample_affected
from abcde.util import progress
from abcde.util.files import (RACY_SECONDS, InputPrints, aside_prefix, file_identity, make_temp_dir,
                              remove_dead_leftovers, swap_dir_in)
from abcde.workflow.record import OUTPUTS, RECORD, make_record, write_record

if TYPE_CHECKING:
    from abcde.metrics.truth_sample import TruthSampleResult

#: What ``evaluate`` (and the demo, built on it) writes in its directory.
ENTRIES = frozenset({"impact", "explore", "quality", "report.html", "report.md", RECORD})
#: The entries that are directories, and what each holds (``quality``: anything; it is kept).
SUBDIRS = {"impact": frozenset({"items.parquet", "base_clusters.parquet", "exp_clusters.parquet", "impact.json"}),
           "explore": frozenset({"sample.parquet"}), "quality": None}


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
        With ``truth`` and no design: each side's pointwise Precision/Recall/F1 against it (else empty).
    truth_sample
        With ``truth`` and its design (``truth_sample``): the population's estimates for Base and
        Exp and their paired differences; else None.
    report, report_path
        The report (without quality estimates: nothing is judged yet) and its HTML file.
    stages
        Per stage: its name, seconds and rows, in order.
    written
        Every file written, in order (the record ``evaluate.json`` last).
    record
        What ``evaluate.json`` holds (:func:`~abcde.workflow.record.read_evaluation` describes it).
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
    record: dict = field(default_factory=dict)
    truth_sample: TruthSampleResult | None = None

    def to_dict(self) -> dict:
        """The outputs as JSON-ready values (``abcde evaluate --json``). With a truth sample,
        ``pointwise_against_truth`` holds each side's estimates (:meth:`TruthSampleResult.side_dict`)
        and ``truth_sample`` the whole result with the paired differences."""
        pw = ({side: self.truth_sample.side_dict(side) for side in self.truth_sample.sides}
              if self.truth_sample is not None else
              {k: v.to_dict() for k, v in self.pointwise_against_truth.items()})
        return {"impact": self.impact.to_dict(), "explore": {"sample": self.exploration.metadata},
                "pairs": {"dir": str(self.pair_dir)}, "pointwise_against_truth": pw,
                "truth_sample": self.truth_sample.to_dict() if self.truth_sample is not None else None,
                "report": str(self.report_path), "record": str(self.out_dir / RECORD), "stages": self.stages,
                "written": [str(p) for p in self.written]}


def check_out_dir(out: Path, what: str = "evaluate", kept: frozenset = frozenset()) -> None:
    """Refuse an ``out`` that is neither new, nor empty, nor an earlier run's directory (which holds
    only what this job writes, ``impact/`` first of all, and in ``impact/`` and ``explore/`` only their
    files): the job replaces the whole directory, so a directory of someone else's files is left
    alone. ``quality/`` may hold anything (judgements, earlier samples): it is carried over; so may the
    directories named in ``kept`` (what ``abcde ids`` keeps there: ``inputs/``), which the caller
    writes (an ``out`` holding only those is new)."""
    if out.exists() and not out.is_dir():
        raise InputError(f"The output directory '{out}' is a file; give --out a new or empty directory "
                         f"(or one an earlier 'abcde {what}' wrote).")
    if not out.is_dir():
        return  # new
    entries = sorted(p.name for p in out.iterdir() if not _temporary(p.name))
    foreign = [n for n in entries if n in kept and ((out / n).is_symlink() or not (out / n).is_dir())]
    if foreign:
        raise InputError(f"The output directory '{out}' holds {foreign[0]!r} as a link or a file, where 'abcde {what}' "
                         "keeps a directory of its own. Give --out a new or empty directory.")
    entries = [n for n in entries if n not in kept]
    if not entries:
        return
    foreign = [n for n in entries if n not in ENTRIES]
    if not foreign:
        for name, files in SUBDIRS.items():
            p = out / name
            if p.exists() and (p.is_symlink() or not p.is_dir()):
                foreign.append(name)
            elif p.is_dir() and files is not None:
                foreign += [f"{name}/{c.name}" for c in sorted(p.iterdir()) if c.name not in files
                            and not _temporary(c.name)]
        foreign += [n for n in ENTRIES - set(SUBDIRS) if (out / n).is_dir() or (out / n).is_symlink()]
    if foreign or "impact" not in entries:
        found = f"files that 'abcde {what}' does not write (first: {', '.join(repr(n) for n in foreign[:5])})" \
            if foreign else f"no impact/ of an earlier 'abcde {what}'"
        raise InputError(f"The output directory '{out}' is not empty and holds {found}. "
                         f"Give --out a new or empty directory (or one an earlier 'abcde {what}' wrote).")


def _temporary(name: str) -> bool:
    """Whether a name is one of abcde's temporary files or folders (left by a killed writer)."""
    return name.startswith(".abcde-") or (name.startswith(".") and (".abcde-" in name or name.endswith(".tmp")))


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
    only_affected: bool = True,
    quality_slice_by: Sequence[str] | None = None,
    truth_sample: str | None = None,
    population_entities: float | None = None,
    engine: Engine | str | None = None,
    truth_cluster_id: str | None = None,
    kept: Sequence[str] = (),
    question: str | None = None,
) -> EvaluateResult:
    """Impact, exploration sample, pair sample and report of Exp relative to Base, written to
    ``out_dir`` from one read of the inputs (see the module's docstring).

    ``slice_by``: attribute columns for the impact slices, the pair sample's exact slice multipliers
    and (unless ``explore_by``) the report's exploration groups. ``sample_size``: draws of the
    exploration sample; ``budget``: distinct pairs to judge (``estimator`` and ``hide`` as in
    :func:`abcde.draw_pair_sample`). ``truth``: a ground-truth clustering, for each side's
    pointwise Precision/Recall/F1 in the report, its entity column ``truth_cluster_id`` (default the
    cluster column; ``truth=items, truth_cluster_id=COL`` reads the truth from the items table, and COL
    is hidden from the judges); ``truth_sample`` (and ``population_entities``): the
    design its entities were sampled by, for the population's estimates with intervals instead
    (as :func:`abcde.workflow.report.run_report`; recorded, so the rebuilt report uses it too).
    ``force``: replace another pair sample in ``out_dir/quality`` (moved aside with its judgements,
    never deleted). ``only_affected``: the
    impact tables hold the affected items and clusters only (the default: every metric of the others is 0,
    and their count and weight are in ``impact.json``; :meth:`ImpactResult.write`); ``False``: every item
    and cluster (at a hundred million items, writing those took longer than the impact itself).
    ``kept``: paths inside ``out_dir`` (``inputs/<digest>``, as :func:`abcde.workflow.ids.evaluate_ids`
    writes the tagged inputs there before this run reads them) that are hard-linked into the new
    directory, so the swap keeps them. ``question``: what the pairs ask, when not whether two items are one
    entity (``"ids"``, :func:`abcde.workflow.ids.evaluate_ids`), recorded in the pair sample.
    ``quality_slice_by``: the attributes of ΔPrecision's slices in the report rebuilt once the pairs
    are judged (:func:`abcde.workflow.report.report_from_evaluation`); default: ``slice_by``.

    Everything it was given is recorded in ``out_dir/evaluate.json`` (see
    :func:`~abcde.workflow.record.read_evaluation`). The whole directory is built aside and swapped in
    at the end (see the module's docstring): a run that fails, is refused or is killed leaves
    ``out_dir`` as it was. The input files' fingerprints are taken before they are read and checked
    after the last read: an input changed meanwhile is refused, so what the record and the pair
    sample name is what was read.
    """
    out = Path(out_dir)
    check_out_dir(out, kept=frozenset(Path(k).parts[0] for k in kept))
    check_truth_sample(truth, truth_sample, population_entities)
    given = Inputs.of(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight)
    if truth_cluster_id is not None and truth is not None and _same_source(truth, given.items):
        hide = (*hide, truth_cluster_id) if truth_cluster_id not in hide else tuple(hide)  # the answer, hidden
    # Names the report cannot group by are refused before the impact (hours at a billion items).
    where = f"the {describe(given.items, 'items')}"
    for col in slice_by if explore_by is None else ():  # the report groups by each slice column
        check_group_columns([col], where=where, what="Slice column", why=", which the report groups by each slice column")
    for col in explore_by or ():
        check_group_columns([col], where=where, what="Exploration group column")
    stages: list[dict] = []

    stage = functools.partial(_Stage, stages=stages)  # stage(name, part=None)

    # Before anything reads them: the fingerprints the record and the pair sample keep (hashed beside
    # the impact's first reads, each file's identity taken now: _PrintsAside).
    printing = _PrintsAside(given, truth, engine)
    real = Path(os.path.realpath(out))  # where the directory is swapped in (a link to it: its target)
    made = _make_parents(real.parent)
    new, done = None, False
    try:
        remove_dead_leftovers(real)
        new = make_temp_dir(real.parent, prefix=aside_prefix(real))
        with stage("impact") as st:
            res = impact(given, slice_by=list(slice_by), top=top, engine=engine)
            st.rows = res.items
        prints = printing.result()
        check_hidden(res.diff.attributes, hide)  # before anything is written, not after half of it
        record = make_record(given, truth, prints, slice_by=slice_by, explore_by=explore_by, top=top,
                             sample_size=sample_size, budget=budget, seed=seed, estimator=estimator, hide=hide,
                             title=title, only_affected=only_affected, quality_slice_by=quality_slice_by,
                             truth_sample=truth_sample, population_entities=population_entities,
                             truth_cluster_id=truth_cluster_id, engine=res.diff.engine)
        written: list[str | Path] = []
        with stage("pair sample", part="the agreed cells to read with the affected items"):  # one read, not two
            read_pair_sample_early(res.diff, budget=budget, seed=seed, estimator=estimator)
        with stage("impact tables") as st:
            written += res.write(new / OUTPUTS["impact"], only_affected=only_affected)
            st.rows = res.items
        with stage("exploration sample") as st, warnings.catch_warnings():
            # Nothing affected: the impact already says nothing changed; the empty sample's warning would repeat it.
            warnings.filterwarnings("ignore", message="No item is affected")
            sample = sample_affected(res, size=sample_size, seed=seed, inputs={
                k: os.fspath(v) for k, v in (("base", given.base), ("exp", given.exp), ("items", given.items))
                if isinstance(v, (str, os.PathLike))})
            written.append(sample.write(new / OUTPUTS["exploration_sample"]))
            st.rows = sample.table.num_rows
        with stage("pair sample") as st:
            staged = stage_pair_sample(given, out / OUTPUTS["pair_sample"], new / OUTPUTS["pair_sample"],
                                       diff=res.diff, prints=prints, budget=budget, seed=seed,
                                       slice_by=list(slice_by), estimator=estimator, force=force, hide=hide,
                                       question=question)
            written.append(new / OUTPUTS["pair_sample"] / "tasks.csv")
            st.rows = int(staged.metadata["judgeable_pairs"])
        against: dict[str, PointwiseResult] | TruthSampleResult = {}
        if truth is not None:
            with stage("pointwise against the truth") as st:
                against = pointwise_against(truth, given, res.diff.engine, truth_sample=truth_sample,
                                            population_entities=population_entities, truth_cluster_id=truth_cluster_id)
                st.rows = res.items
        with stage("report") as st:
            rep = evaluation_report(record, res, sample, truth=against)
            written += rep.write(new / OUTPUTS["report"], markdown=new / OUTPUTS["markdown"])
            record["options"]["allocation"] = staged.metadata.get("allocation")
            # After the last read of the inputs: what the record names is what was read.
            printing.check("evaluating")
            written.append(write_record(new, record))
            st.rows = None
        for k in kept:  # what the caller keeps in OUT (abcde ids: the tagged inputs this run read), linked in
            link_tree(real / k, new / k)
        with staged.kept_linked():  # OUT/quality's judgements (and earlier samples), linked in for the swap
            swap_dir_in(new, real, last=RECORD)
        done = True
    finally:
        if new is not None:
            shutil.rmtree(new, ignore_errors=True)  # the new directory if anything failed; else the old one
        if not done:
            for d in reversed(made):  # the parents this run made, if they stayed empty
                try:
                    d.rmdir()
                except OSError:
                    break
    written = [out / Path(p).relative_to(new) for p in written]
    ts = against if not isinstance(against, dict) else None
    return EvaluateResult(out_dir=out, impact=res, exploration=sample, sample_path=out / OUTPUTS["exploration_sample"],
                          pair_dir=out / OUTPUTS["pair_sample"], report=rep, report_path=out / OUTPUTS["report"],
                          pointwise_against_truth=against if ts is None else {}, stages=stages, written=written,
                          record=record, truth_sample=ts)


def link_tree(src: Path, dst: Path) -> None:
    """Hard-link the regular files of the directory ``src`` into ``dst`` (made), keeping its layout; a
    link or anything but a directory or a regular file in it is refused."""
    if src.is_symlink() or not src.is_dir():
        raise InputError(f"'{src}' is not a directory of its own (a link, a file, or missing): abcde keeps only "
                         "the directories it wrote there.")
    dst.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src.iterdir()):
        if entry.is_symlink():
            raise InputError(f"'{entry}' is a link: abcde keeps only the files it wrote there.")
        if entry.is_dir():
            link_tree(entry, dst / entry.name)
        elif entry.is_file():
            os.link(entry, dst / entry.name)
        else:
            raise InputError(f"'{entry}' is not a regular file: abcde keeps only the files it wrote there.")


def _same_source(a, b) -> bool:
    """Whether the truth is the items table itself (the same object, or the same file)."""
    if a is b:
        return True
    if isinstance(a, (str, os.PathLike)) and isinstance(b, (str, os.PathLike)):
        return os.path.realpath(a) == os.path.realpath(b)
    return False


class _PrintsAside:
    """The inputs' fingerprints (:class:`~abcde.util.files.InputPrints`, the sha256 of each file's
    whole content), hashed in a thread while the impact reads the same files: at a hundred million
    items hashing them first took 5 s, at a billion 45 s, before the first row was read.

    Each file's identity (device, inode, size, modification and change time) is taken here, before
    anything reads it, and compared again once the hashes are done (:meth:`result`) and after the last
    read (:meth:`check`): a write changes the change time, which no unprivileged program sets back,
    and a file put in its place has another inode, so an unchanged identity means the content hashed,
    and every content read, is the content at the start. A file changed less than
    :data:`~abcde.util.files.RACY_SECONDS` before (a second write within one tick of the clock could
    leave its identity as it was), or a database engine (which fingerprints the inputs itself when it
    keeps them), and the hashes are taken here, before anything reads the files, as without a thread."""

    def __init__(self, given: Inputs, truth, engine) -> None:
        self._given, self._truth = given, truth
        self._prints: InputPrints | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._identity: dict[str, tuple[str, tuple]] = {}
        self._aside = False
        started = time.time_ns()
        aside = not getattr(engine, "persistent", False)
        for role, source in (("base", given.base), ("exp", given.exp), ("items", given.items), ("truth", truth)):
            if not isinstance(source, (str, os.PathLike)) or "://" in os.fspath(source):
                continue
            try:
                st = os.stat(source)
            except OSError:
                continue  # missing: reading it fails, naming it
            if not os.path.isfile(source):
                continue
            self._identity[role] = (os.fspath(source), file_identity(st))
            aside = aside and st.st_ctime_ns < started - int(RACY_SECONDS * 1e9)
        if not aside:
            self._prints = InputPrints.of(given, truth=truth)
            return
        self._aside = True
        self._thread = threading.Thread(target=self._hash, name="abcde-fingerprints", daemon=True)
        self._thread.start()

    def _hash(self) -> None:
        try:
            self._prints = InputPrints.of(self._given, truth=self._truth)
        except BaseException as exc:  # noqa: BLE001 - raised again by result(), in the caller's thread
            self._error = exc

    def result(self) -> InputPrints:
        """The fingerprints; refuses (:class:`InputError`) a file whose identity changed since it was
        taken (it was written to, or replaced, while abcde read it)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            if self._error is not None:
                raise self._error
            self._unchanged("evaluating")
        return self._prints  # set by __init__, or by the thread (which raised otherwise)

    def check(self, doing: str) -> None:
        """After the last read of the inputs: refuse a file changed since its fingerprint was taken.
        Files hashed beside the impact are compared by identity with the one taken before anything
        read them (as :class:`~abcde.util.files.InputPrints` checks files over 1 GiB: a file hashed
        again here cost a second of a 20M-item run); the others as ``InputPrints.check`` does."""
        prints = self.result()
        if self._aside:
            self._unchanged(doing)
        else:
            prints.check(doing)

    def _unchanged(self, doing: str) -> None:
        for role, (path, was) in self._identity.items():
            try:
                now = file_identity(os.stat(path))
            except OSError:
                now = None
            if now != was:
                raise InputError(f"The {role} file '{path}' changed while abcde was reading it ({doing}): it "
                                 f"{'was removed' if now is None else 'was written to or replaced'} since its "
                                 "fingerprint was taken. Nothing was written; run again once it stays as it is.")


def _make_parents(d: Path) -> list[Path]:
    """Make ``d`` and its missing parents; returns those made, outermost first."""
    missing = []
    while not d.exists():
        missing.append(d)
        if d.parent == d:
            break
        d = d.parent
    missing.reverse()
    for m in missing:
        m.mkdir(exist_ok=True)
    return missing


def evaluation_report(record: dict, result: ImpactResult, exploration: ExplorationSample, *,
                      truth: dict | None = None, quality=None, judged_by: str | None = None,
                      title: str | None = None) -> Report:
    """The report of an evaluation, with the options it recorded (``record``, see
    :func:`~abcde.workflow.record.read_evaluation`): what :func:`evaluate` writes (without ``quality``)
    and what :func:`abcde.workflow.report.report_from_evaluation` rebuilds (with it)."""
    o = record["options"]
    return build_report(result, quality=quality, judged_by=judged_by, exploration=exploration,
                        explore_by=list(o["explore_by"]), title=title or o["title"], truth=truth or None)


class _Stage:
    """One stage of the job: shown by the progress display (elapsed time, rows) and recorded."""

    def __init__(self, name: str, stages: list[dict], part: str | None = None):
        self.name, self.stages, self.rows, self.part = name, stages, None, part

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            seconds = time.perf_counter() - self.start
            # A stage done in parts (the pair sample's first part comes before the impact tables) is one
            # record, at the place of its last part, with the seconds of all of them.
            before = [s for s in self.stages if s["stage"] == self.name]
            for s in before:
                self.stages.remove(s)
            total = seconds + sum(s["seconds"] for s in before)
            self.stages.append({"stage": self.name, "seconds": round(total, 3), "rows": self.rows})
            progress.stage_done(f"Stage {len(self.stages)}: {self.name}" + (f", part: {self.part}" if self.part else ""),
                                seconds, self.rows)
        return False
