"""The report of a change (``abcde report``): impact, optional quality and exploration
sample, gathered into one report and written as HTML (and Markdown).

- :func:`run_report` — from the inputs and whatever else is given (``abcde report --base ...``);
- :func:`report_from_evaluation` — the report of an ``abcde evaluate`` directory rebuilt from
  its record, every section kept, with the judgements made since (``abcde report EVALDIR``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from abcde.engine import Engine, connect
from abcde.errors import InputError, with_option
from abcde.metrics.impact import ImpactResult, impact
from abcde.report.build import Report, build_report, with_entities, with_id_table
from abcde.report.truth import check_truth_sample, pointwise_against, split_truth

if TYPE_CHECKING:
    from abcde.completion.estimate import EntityQuality
    from abcde.quality.result import QualityResult
    from abcde.sampling.explore import ExplorationSample
    from abcde.metrics.pointwise import PointwiseResult
    from abcde.metrics.truth_sample import TruthSampleResult


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
    pointwise_against_truth
        With a truth and no design: each side's pointwise Precision/Recall/F1 against it (else empty).
    quality_dir
        The pair sample the quality estimates are (or, when nothing is judged yet, would be) from.
    truth_sample
        With a truth and its design (``truth_sample``): the population's estimates for Base and Exp
        and their paired differences (:class:`~abcde.metrics.truth_sample.TruthSampleResult`); else None.
    entities
        With an entity sample (``entities``): its pointwise ΔRecall, IQ and ΔPrecision
        (:class:`~abcde.completion.EntityQuality`); else None.
    """

    impact: ImpactResult
    quality: QualityResult | None
    exploration: ExplorationSample | None
    report: Report
    written: list[Path]
    pointwise_against_truth: dict[str, PointwiseResult] = field(default_factory=dict)
    quality_dir: Path | None = None
    truth_sample: TruthSampleResult | None = None
    entities: EntityQuality | None = None

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
    truth_sample: str | None = None,
    population_entities: float | None = None,
    engine: Engine | str | None = None,
    truth_cluster_id: str | None = None,
    entities: str | os.PathLike | None = None,
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
        Precision, Recall and F1 of Base and Exp against it. A truth covering part of the items
        gives numbers over those items, and the report says so in words.
    truth_cluster_id
        The truth's column of each item's entity (default: ``cluster_id``). The items table may be
        the truth: ``truth=items, truth_cluster_id="entity_id"`` (``--truth-column entity_id``).
    truth_sample, population_entities
        The truth lists complete entities sampled by a design: ``"uniform"`` (a simple random sample
        of entities) or the name of the truth's column of inclusion probabilities. The report then
        shows the population's Precision, Recall and F1 of Base and Exp estimated with 95%
        intervals, the paired differences, the design, and the numbers over the truth's items
        only, labelled as such (:func:`abcde.metrics.truth_sample.estimate_pointwise`;
        ``population_entities`` is its ``N``, uniform design only).
    entities
        An entity sample directory (from :func:`abcde.entities`, drawn from these inputs): adds its
        pointwise ΔRecall, IQ and ΔPrecision, and the pointwise ΔRecall beside the recall lift.
    """
    if quality is None and (judgements or quality_slice_by):
        raise InputError("judgements and quality_slice_by need a judged pair sample directory (quality=...).")
    check_truth_sample(truth, truth_sample, population_entities)
    prints = None
    if quality is not None:
        from abcde.samples.sample_dir import PairSampleDir  # lazy: start-up time

        # The sample describes the inputs it was drawn from: refuse inputs that changed since, with
        # fingerprints taken before anything reads them and checked again before anything is written.
        from abcde.util.files import reading_record, refuse_special_entries  # lazy: start-up time

        refuse_special_entries(quality, what=f"the pair sample '{quality}'", expected="draw the pairs again")
        with reading_record(f"the pair sample in '{quality}'", expected="draw the pairs again"):
            sample_dir = PairSampleDir.read(quality)
        prints = sample_dir.check_inputs(base=base, exp=exp, items=items)
    res = impact(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight, slice_by=slice_by,
                 top=top, engine=engine)
    qual = None
    # Quality estimates, exploration samples and pointwise metrics are imported only when asked for
    # (their imports are a tenth of the command's own start-up; see benchmarks/startup.py).
    if quality is not None:
        from abcde.quality.estimate import estimate_quality  # lazy: start-up time

        qual = estimate_quality(quality, list(judgements) or None, slice_by=quality_slice_by, diff=res)
        judged_by = judged_by or f"the judgements in {quality}"
    exploration = None
    if sample:
        from abcde.sampling.explore import ExplorationSample  # lazy: start-up time

        exploration = ExplorationSample.read(sample)
    against = None
    if truth is not None:
        from abcde.core.inputs import Inputs  # lazy: start-up time

        given = Inputs.of(base, exp, items=items, item_id=item_id, cluster_id=cluster_id, weight=weight)
        # On the impact's engine (a named engine is made once, not once per side).
        against = pointwise_against(truth, given, res.diff.engine, truth_sample=truth_sample,
                                    population_entities=population_entities, truth_cluster_id=truth_cluster_id)
    rep = build_report(res, quality=qual, judged_by=judged_by, exploration=exploration, explore_by=explore_by,
                       title=title, truth=against)
    ent = None
    if entities is not None:
        from abcde.util.files import InputPrints  # lazy: start-up time

        given_prints = prints if prints is not None else InputPrints({"base": base, "exp": exp, "items": items})
        rep, ent = _with_entities(rep, entities, given_prints.prints, "these inputs")
    if prints is not None:
        prints.check("building the report")
    written = rep.write(out, markdown=markdown)
    pw, ts = split_truth(against)
    return ReportResult(impact=res, quality=qual, exploration=exploration, report=rep, written=written,
                        pointwise_against_truth=pw, truth_sample=ts, entities=ent)


def report_from_evaluation(
    evaldir: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    markdown: str | os.PathLike | None = None,
    judged_by: str | None = None,
    judgements: Sequence[str | os.PathLike] = (),
    quality_slice_by: Sequence[str] | None = None,
    title: str | None = None,
    engine: Engine | str | None = None,
    remote_inputs: bool = False,
    entities: str | os.PathLike | None = None,
) -> ReportResult:
    """The report of an ``abcde evaluate`` directory again, with every section it had and the
    quality estimates from the judgements made since (``abcde report EVALDIR``).

    It reads how the evaluation was run from ``evaldir/evaluate.json``
    (:func:`abcde.workflow.record.read_evaluation`): the inputs (their absolute paths), columns,
    slices, top clusters, title and engine. It computes the impact again from the inputs, reads the
    exploration sample ``evaldir/explore/sample.parquet``, adds each side's pointwise metrics
    against the recorded truth (with the recorded design of a truth sample, its estimates), and
    estimates the quality from the judgements in
    ``evaldir/quality`` (only read, never written). Without any judgement yet, the report has no
    quality estimates and says so. The evaluation of ``abcde ids`` (its pair sample asks about ids)
    adds the section of its id table, kept beside the tagged inputs and checked against the record's
    fingerprints of them (:func:`abcde.workflow.ids.recorded_id_table`).

    An evaluation directory is shared (attached to a review, copied from a colleague), so its
    record is not trusted with anything but the inputs and options (issue 39): the outputs are
    the directory's own (``evaldir/report.html``, ``report.md``, ``quality``,
    ``explore/sample.parquet``: a record naming other places is refused, as is a link out of
    ``evaldir`` in their place), so a directory moved or copied elsewhere is rebuilt where it is
    now. The recorded engine is used with its memory limit and threads, but never its database
    file (a cache opened read-write: computed without it, said in a note; give ``engine`` on it to
    reuse its kept inputs and fragments), and a recorded Spark Connect server (``engine.remote``)
    or non-local Spark master (``engine.master``) is refused: give ``engine`` to compute there.
    An input the record names by URI (``s3://``, ``https://``, ...) is read only with
    ``remote_inputs``.

    Parameters
    ----------
    evaldir
        The directory ``abcde evaluate`` (or ``abcde demo``) wrote.
    out, markdown
        Where to write the HTML page and the Markdown summary; default the evaluation's own
        ``report.html`` and ``report.md``, each replaced at once (written aside, then renamed).
        With ``out`` given, the Markdown is written only where ``markdown`` says.
    judged_by
        Who judged, shown beside every quality number; default: told from the judgements'
        sources (an oracle is named as one).
    judgements, quality_slice_by
        Judgement files instead of the sample's own; the attributes of ΔPrecision's slices
        (default: the recorded ones).
    title
        The report's title (default: the recorded one).
    engine
        The engine to compute with (default: the recorded one, without its database file and
        never a remote one; made and closed here, so the returned impact's tables are no longer
        queryable).
    remote_inputs
        Read inputs the record names by URI (default: refused; only local files are read).
    entities
        An entity sample directory (from ``abcde entities``, drawn from the evaluation's inputs):
        adds its section, the pointwise ΔRecall beside the recall lift.

    Raises
    ------
    InputError
        ``evaldir`` is not an evaluation directory, its record is missing or unreadable, names
        an output other than the directory's own or a remote engine (without ``engine``), an
        input by URI (without ``remote_inputs``), a file it reads is a link out of ``evaldir``
        or not a regular file (a named pipe in its place), a recorded input is missing, is not a
        regular file (a directory is never globbed, a pipe never opened), carries no whole
        fingerprint, or changed since (the record's and the pair sample's fingerprints).
    """
    from abcde.quality.estimate import estimate_quality  # lazy: start-up time
    from abcde.samples.judgements import judgement_files  # lazy: start-up time
    from abcde.samples.sample_dir import PairSampleDir  # lazy: start-up time
    from abcde.sampling.explore import ExplorationSample  # lazy: start-up time
    from abcde.workflow.evaluate import evaluation_report  # lazy: start-up time
    from abcde.util.files import reading_record, refuse_special_entries  # lazy: start-up time
    from abcde.workflow.record import OUTPUTS, RECORD, read_evaluation, refuse_links_out  # lazy: start-up time

    d = Path(evaldir)
    record = read_evaluation(d)  # refuses outputs.* other than the directory's own names
    # Every place is the directory's own (never the record's): a copied or moved directory is rebuilt
    # where it is now, and nothing is read through a link out of it.
    places = {key: d / name for key, name in OUTPUTS.items()}
    qdir, sample = places["pair_sample"], places["exploration_sample"]
    refuse_links_out(d, [sample.parent, sample, qdir, *(sorted(qdir.iterdir()) if qdir.is_dir() else ())])
    # evaluate writes only files and directories there: a named pipe in a shared directory's place
    # (its judgement store, its pairs) would block the reader forever, a device never end.
    again = "run 'abcde evaluate' again to write it"
    refuse_special_entries(qdir, what=f"the evaluation's pair sample '{qdir}'", expected=again)
    refuse_special_entries(sample.parent, what=f"the evaluation's '{sample.parent}'", expected=again)
    own = engine is None
    if own:
        _check_recorded_engine(d / RECORD, record)  # before anything is read or opened
    given, truth = _recorded_inputs(d, record, remote_inputs=remote_inputs)
    with reading_record(f"the pair sample in '{qdir}'", expected="run 'abcde evaluate' again"):
        pairs = PairSampleDir.read(qdir)
    # The samples describe the inputs they were drawn from: refuse inputs that changed since.
    prints = pairs.check_inputs(base=given.base, exp=given.exp, items=given.items)
    # ... and so does the record: every input it names is the file it fingerprinted (the truth too).
    truth_prints = _check_recorded_prints(d, record, prints, truth)
    ids = None
    if pairs.metadata.get("question") == "ids":  # 'abcde ids': its id table beside the recorded tagged inputs
        from abcde.workflow.ids import recorded_id_table  # lazy: start-up time

        ids = recorded_id_table(d, record)
    exploration = ExplorationSample.read(sample)
    files = [Path(j) for j in judgements] or judgement_files(qdir)
    eng = _recorded_engine(d / RECORD, record) if own else engine
    try:
        res = impact(given, slice_by=record["options"]["slice_by"], top=record["options"]["top"], engine=eng)
        o = record["options"]
        against = pointwise_against(truth, given, res.diff.engine, truth_sample=o.get("truth_sample"),
                                    population_entities=o.get("population_entities"),
                                    truth_cluster_id=record["columns"].get("truth_cluster_id")) if truth is not None else {}
        qual = None
        if files:
            slices = record["options"]["quality_slice_by"] if quality_slice_by is None else quality_slice_by
            q = estimate_quality(qdir, files, slice_by=list(slices), diff=res)
            if q.judged_pairs or q.unsure_pairs:  # else: nothing judged yet, no estimates to show
                qual = q
                judged_by = judged_by or _judged_by(qdir, files, pairs)
        rep = evaluation_report(record, res, exploration, truth=against, quality=qual, judged_by=judged_by,
                                title=title)
        if ids is not None:
            rep = with_id_table(rep, ids)
        ent = None
        if entities is not None:
            rep, ent = _with_entities(rep, entities, prints.prints, f"the evaluation in '{d}'")
    finally:
        if own:
            eng.close()
    if out is None:  # else: where the caller says (the user's own choice, anywhere)
        out, markdown = places["report"], (places["markdown"] if markdown is None else markdown)
    prints.check("rebuilding the report")  # the inputs read are the ones fingerprinted
    truth_prints.check("rebuilding the report")
    written = rep.write(out, markdown=markdown)
    pw, ts = split_truth(against)
    return ReportResult(impact=res, quality=qual, exploration=exploration, report=rep, written=written,
                        pointwise_against_truth=pw, quality_dir=qdir, truth_sample=ts, entities=ent)


def _with_entities(rep: Report, entities, prints: dict, where: str):
    """``rep`` with the section of the entity sample in ``entities`` (a directory written by
    ``abcde entities``, drawn from the inputs fingerprinted in ``prints``, else refused), and its
    estimates (:func:`abcde.completion.estimate_entities`, from the answers now in it)."""
    from abcde.completion.beside import check_drawn_from  # lazy: only with an entity sample
    from abcde.completion.estimate import estimate_entities  # lazy: only with an entity sample
    from abcde.completion.sample import EntitySample  # lazy: only with an entity sample

    s = EntitySample.read(entities)
    check_drawn_from(s, prints, where)
    q = estimate_entities(s)
    return with_entities(rep, q), q


#: The inputs an evaluation's record names (``inputs.*``).
RECORDED_ROLES = ("base", "exp", "items", "truth")


def _recorded_inputs(d: Path, record: dict, *, remote_inputs: bool = False):
    """The recorded inputs (absolute paths) as :class:`abcde.Inputs`, and the truth's path.

    A shared directory's record is not trusted with what it names (issue 50): each input is a
    regular file, named by an absolute path, whose whole fingerprint the record holds (checked
    against the file by :func:`_check_recorded_prints`); anything else is refused before anything
    opens it: an input that was a table (nothing to read again), is missing now, has no
    fingerprint, or is a directory (never globbed from a record), a named pipe (whose reader would
    wait forever), a device or a socket. An input named by a URI is refused too, unless
    ``remote_inputs`` (the user's own say: a record could name any server; a URI has no fingerprint).
    """
    from abcde.core.inputs import Inputs  # lazy: start-up time
    from abcde.util.files import check_input_path  # lazy: start-up time
    from abcde.workflow.record import OUTPUTS, RECORD  # lazy: start-up time

    f = d / RECORD
    yourself = (f"give the inputs yourself (abcde report --base BASE --exp EXP --quality {d / OUTPUTS['pair_sample']} "
                "--out FILE)")
    paths = {}
    for role, r in record["inputs"].items():
        if role not in RECORDED_ROLES:
            raise InputError(f"'{f}': inputs.{role} is not an input 'abcde evaluate' records (it records "
                             f"{', '.join(RECORDED_ROLES)}); 'abcde report DIR' reads nothing else a record names. "
                             "Run 'abcde evaluate' again to write a new record.")
        if r is None:
            paths[role] = None
            continue
        if not r.get("path"):
            raise InputError(f"The {role} of the evaluation in '{d}' was a {r.get('given')} in memory, not a file: "
                             "it cannot be read again. Use 'abcde report --base ... --quality "
                             f"{d / OUTPUTS['pair_sample']}' with the inputs as files.")
        p = r["path"]
        if "://" in p:
            if not remote_inputs:
                raise InputError(f"'{f}': inputs.{role} is the URI {p!r}: 'abcde report DIR' reads no remote "
                                 "location that only the record names (a shared directory's record could name any "
                                 "server)." + with_option("remote_inputs", " If it is your data, say so: {option}."))
            paths[role] = p
            continue
        if not os.path.isabs(p):
            raise InputError(f"'{f}': inputs.{role} is the relative path {p!r}; 'abcde evaluate' records absolute "
                             "paths, and 'abcde report DIR' reads nothing else a record names. Run 'abcde evaluate' "
                             "again to write a new record.")
        where = f"The {role} input '{p}' recorded in '{f}'"
        st = check_input_path(p, where=where, expected="'abcde report DIR' reads only the regular files its record "
                                                       f"fingerprinted, never opens anything else it names; {yourself}")
        if st is None:
            raise InputError(f"The {role} input '{p}' recorded in '{f}' does not exist any more"
                             + (f" (given as '{r['given']}')" if r.get("given") != p else "")
                             + ". Put it back, or run 'abcde evaluate' again.")
        fp = r.get("fingerprint")
        if not _whole_fingerprint(fp):
            if not isinstance(fp, dict) or not fp:
                what = "no fingerprint"
            elif "sha256" in fp:
                what = "a garbled fingerprint"
            else:
                what = ("only part of its fingerprint (size, time and the first and last MiB, as abcde did for files "
                        "over 1 GiB before)")
            raise InputError(f"'{f}': inputs.{role} ('{p}') carries {what}: 'abcde report DIR' reads only files whose "
                             "whole fingerprint the record holds, so it can tell they are the ones the evaluation "
                             f"read. Run 'abcde evaluate' again, or {yourself}.")
        paths[role] = p
    c = record["columns"]
    given = Inputs(paths["base"], paths["exp"], items=paths.get("items"), item_id=c["item_id"],
                   cluster_id=c["cluster_id"], base_cluster_id=c.get("base_cluster_id"),
                   exp_cluster_id=c.get("exp_cluster_id"), weight=c["weight"])
    return given, paths.get("truth")


def _whole_fingerprint(fp) -> bool:
    """Whether ``fp`` is a whole fingerprint as abcde records one: ``{"size": bytes, "sha256": 64 hex digits}``."""
    return (isinstance(fp, dict) and isinstance(fp.get("sha256"), str) and len(fp["sha256"]) == 64
            and all(ch in "0123456789abcdef" for ch in fp["sha256"])
            and isinstance(fp.get("size"), int) and not isinstance(fp.get("size"), bool) and 0 <= fp["size"] < 2**63)


def _check_recorded_prints(d: Path, record: dict, prints, truth):
    """Refuse a recorded input whose file is not the one the record fingerprinted (the record's own
    fingerprints, beside the pair sample's: an edited record cannot point at another file). ``prints``
    are base's, exp's and items' as the pair sample took them; the truth's are taken here and
    returned (:class:`~abcde.util.files.InputPrints`: checked again after the last read)."""
    from abcde.util.files import InputPrints, describe_fingerprint  # lazy: start-up time
    from abcde.workflow.record import RECORD  # lazy: start-up time

    truth_prints = InputPrints({"truth": truth})
    taken = {**prints.prints, **truth_prints.prints}
    sources = {**prints.sources, **truth_prints.sources}
    for role in RECORDED_ROLES:
        r = record["inputs"].get(role)
        source = sources.get(role)
        if r is None or source is None or "://" in os.fspath(source):  # none, or a URI the user said to read
            continue
        was, now = r.get("fingerprint"), taken.get(role)
        if now != was:
            what = "is gone" if now is None else f"is now {describe_fingerprint(now)}"
            raise InputError(f"The {role} input '{os.fspath(source)}' differs from the file the evaluation in "
                             f"'{d}' was made with: '{d / RECORD}' recorded {describe_fingerprint(was)}, it {what}. "
                             "Run 'abcde evaluate' again with it.")
    return truth_prints


#: The Spark masters on this machine (``local``, ``local[4]``, ``local[*]``, ``local[4,2]``): a
#: recorded one is used; any other (a cluster, yarn, k8s://...) only when the caller gives it.
_LOCAL_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?")


class _RemoteEngineRefused(InputError):
    """A remote engine named only by an evaluation's record: refused, with the way to give it
    spelled for the command line or for Python."""

    def __init__(self, message: str, cli: str = "", python: str = "") -> None:
        super().__init__(message + python)
        self._message, self._cli = message, cli

    def render(self, options: set | None = None) -> str:
        if options is not None and "engine" in options:
            return self._message + self._cli
        return super().render(options)


def _check_recorded_engine(f: Path, record: dict) -> None:
    """Refuse a recorded engine that is not on this machine: a Spark Connect server
    (``engine.remote``) or a Spark master other than a local one (``engine.master``). Only the
    caller's own engine connects anywhere (issue 39: a shared directory's record is not trusted)."""
    import shlex  # lazy: start-up time

    def arg(v: str, placeholder: str) -> str:  # on one line, as typed in a shell
        return shlex.quote(v) if v.isprintable() and v.strip() == v and v else placeholder

    e = record["engine"]
    remote, master = e.get("remote"), e.get("master")
    if remote is not None:
        what, field, cli, python = (f"the Spark Connect server {remote!r}", "engine.remote",
                                    f"--engine spark --spark-remote {arg(remote, 'URL')}",
                                    f"engine=connect('spark', remote={remote!r})")
    elif master is not None and not _LOCAL_MASTER.fullmatch(master):
        what, field, cli, python = (f"the Spark master {master!r}", "engine.master",
                                    f"--engine spark --spark-master {arg(master, 'MASTER')}",
                                    f"engine=connect('spark', master={master!r})")
    else:
        return
    message = (f"'{f}': {field} names {what}; 'abcde report DIR' connects to no server or cluster that only the "
               "record names (a shared directory's record could name any). To compute there, give the engine "
               "yourself: ")
    raise _RemoteEngineRefused(message, cli + ".", python + ".")


def _recorded_engine(f: Path, record: dict) -> Engine:
    """The engine the evaluation ran on, on this machine (:func:`_check_recorded_engine`), with its
    memory limit and threads, in memory: a recorded DuckDB database file is never opened (it is
    opened read-write and written to; the record of a shared directory could name any file), and
    a note says so."""
    from abcde.util import progress  # lazy: start-up time

    e = record["engine"]
    _check_recorded_engine(f, record)
    if e["name"] == "spark":
        return connect("spark", master=e.get("master"), threads=e.get("threads"), memory_limit=e.get("memory_limit"))
    db = e.get("database")
    if db:
        progress.note(f"The database {db!r} that '{f}' names (engine.database) is not opened: 'abcde report DIR' "
                      "opens a database only when given one (abcde report DIR --database PATH; in Python "
                      "engine=connect(database=PATH)), so the impact is computed without its kept inputs and "
                      "fragments.")
    return connect(e["name"], memory_limit=e.get("memory_limit"), threads=e.get("threads"))


def _judged_by(qdir: Path, files: Sequence[Path], pairs) -> str:
    """Who made the judgements, from their sources: an oracle is named as one (its judgements
    are simulated from a ground-truth column, not people's)."""
    from abcde.samples.judgements import judgement_source, read_table_file  # lazy: start-up time

    judgeable = pairs.judgeable_ids()
    sources: dict[str, int] = {}
    columns: set[str] = set()
    for f in files:
        for r in read_table_file(f, "judgements").to_pylist():
            if r.get("pair_id") is not None and r["pair_id"] not in judgeable:
                continue
            src = judgement_source(r)
            sources[src] = sources.get(src, 0) + 1
            rater = str(r.get("rater") or "")
            if src == "oracle" and rater.startswith("oracle:"):
                columns.add(rater.split(":", 1)[1])
    if set(sources) == {"oracle"}:
        of = f"the items' {', '.join(repr(c) for c in sorted(columns))} column" if columns else \
            "a ground-truth column"
        return f"an oracle (simulated judgements from {of}), not people"
    counts = ", ".join(f"{n:,} {src}" for src, n in sorted(sources.items(), key=lambda kv: -kv[1]))
    return f"the judgements in {qdir}" + (f" ({counts})" if counts else "")
